"""``python manage.py create_api_key NAME``: create a key and print it once."""

from django.core.management.base import BaseCommand

from ocr_api.models import ApiKey


class Command(BaseCommand):
    help = "Create an API key. The key is printed once; only its hash is stored."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--owner", default="")
        parser.add_argument("--rate-per-minute", type=int, default=60)
        parser.add_argument("--daily-quota", type=int, default=None)

    def handle(self, *args, name, owner, rate_per_minute, daily_quota, **options):
        _, key = ApiKey.objects.create_key(name=name, owner=owner,
                                           rate_per_minute=rate_per_minute,
                                           daily_quota=daily_quota)
        self.stdout.write(f"API key: {key}")
