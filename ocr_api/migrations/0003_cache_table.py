"""Create the database cache table (``CACHE_URL=dbcache://...``, the default) on migrate.

Throttling keeps its counters in the cache; creating the table here means a plain
``manage.py migrate`` (make serve, the Kubernetes migration Job) is the only setup step.
"""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    # Creates the table of every database cache in settings.CACHES; a no-op for Redis etc.
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("ocr_api", "0002_key_limits")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
