from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self):
        # At ready: models, and what uses them, load once the app registry is populated.
        # Every process registers the Celery tasks: the services find them by name
        # (evaluation.services.work.enqueue_on_commit), without importing their module.
        import evaluation.tasks  # noqa: F401
        from evaluation import signals
        from evaluation.models import CalibratedScore, Judge, PromptVersion

        # The scorer changelog sees every new scorer: a judge added or changed, a new prompt
        # version imported, new code deployed (migrate runs on every deploy).
        post_save.connect(signals.judge_saved, sender=Judge, dispatch_uid="scorer-judge")
        post_save.connect(signals.prompt_saved, sender=PromptVersion, dispatch_uid="scorer-prompt")
        post_migrate.connect(signals.migrated, sender=self, dispatch_uid="scorer-deploy")
        # The board shows human-calibrated numbers: a row written or deleted changes its state.
        for signal, uid in (
            (post_save, "board-calibrated-saved"),
            (post_delete, "board-calibrated-deleted"),
        ):
            signal.connect(signals.calibrated_changed, sender=CalibratedScore, dispatch_uid=uid)
