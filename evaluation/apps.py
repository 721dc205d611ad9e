from django.apps import AppConfig
from django.db.models.signals import post_migrate, post_save


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self):
        from evaluation import signals
        from evaluation.models import Judge, PromptVersion

        # The scorer changelog sees every new scorer: a judge added or changed, a new prompt
        # version imported, new code deployed (migrate runs on every deploy).
        post_save.connect(signals.judge_saved, sender=Judge, dispatch_uid="scorer-judge")
        post_save.connect(signals.prompt_saved, sender=PromptVersion, dispatch_uid="scorer-prompt")
        post_migrate.connect(signals.migrated, sender=self, dispatch_uid="scorer-deploy")
