"""``manage.py purge_jobs``: delete jobs past ``expires_at`` (``OCR_JOB_RESULT_TTL`` after they
ended), with their uploads and results. The Kubernetes CronJob that purges the audit log runs
it too."""

from django.core.management.base import BaseCommand
from django.utils import timezone

from ocr_jobs.models import Job


class Command(BaseCommand):
    help = "Delete expired jobs (uploads, pages, results)."

    def handle(self, *args, **options):
        expired = Job.objects.filter(expires_at__lt=timezone.now()).exclude(
            status__in=Job.ACTIVE)
        count = 0
        for job in expired.iterator():
            job.delete_files()
            job.delete()
            count += 1
        self.stdout.write(f"Deleted {count} expired jobs.")
