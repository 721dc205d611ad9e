from django.apps import AppConfig
from django.db.models.signals import post_save


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self):
        from evaluation.models import Score
        from evaluation.services.records import score_saved

        # Every score the pipeline stores is also kept as a record, so re-scoring never loses
        # the numbers it replaces.
        post_save.connect(score_saved, sender=Score, dispatch_uid="evaluation.score_record")
