# The staff user whose session sent an audited request (the demo page), so that its rows no
# longer look like refused anonymous ones.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ocr_api', '0005_refusal_count'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='ocrrequest',
            name='user',
            field=models.ForeignKey(blank=True, help_text='The staff user whose session sent it (the demo page).', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='ocr_requests', to=settings.AUTH_USER_MODEL),
        ),
    ]
