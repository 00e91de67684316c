"""``python manage.py purge_audit_log``: delete audit rows older than the retention period, and
the throttling counters nothing reads any more."""

import datetime as dt

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from ocr_api.models import OcrRequest, QuotaUsage, RateWindow, RefusalCount
from ocr_api.throttling import WINDOW_S


class Command(BaseCommand):
    help = ("Delete OCR audit-log rows older than OCR_AUDIT_RETENTION_DAYS (or --days), and "
            "throttling counters of senders idle for a minute and of past days.")

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=settings.OCR_AUDIT_RETENTION_DAYS,
                            help="keep this many days (default: OCR_AUDIT_RETENTION_DAYS)")
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")

    def handle(self, *args, days, dry_run, **options):
        now = timezone.now()
        cutoff = now - dt.timedelta(days=days)
        old = OcrRequest.objects.filter(created__lt=cutoff)
        old_counts = RefusalCount.objects.filter(minute__lt=cutoff)
        # A window idle for longer than its length is empty; quota of past UTC days is done.
        idle = RateWindow.objects.filter(updated__lt=now - dt.timedelta(seconds=WINDOW_S))
        past = QuotaUsage.objects.filter(day__lt=now.astimezone(dt.UTC).date())
        if dry_run:
            self.stdout.write(f"{old.count()} rows older than {days} days would be deleted "
                              f"(and {old_counts.count()} counts of refusals, "
                              f"{idle.count() + past.count()} throttling counters)")
            return
        deleted, _ = old.delete()
        counts, _ = old_counts.delete()
        counters = idle.delete()[0] + past.delete()[0]
        self.stdout.write(f"deleted {deleted} rows older than {days} days "
                          f"(and {counts} counts of refusals, {counters} throttling counters)")
