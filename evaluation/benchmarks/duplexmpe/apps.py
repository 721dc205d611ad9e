from django.apps import AppConfig


class DuplexMPEConfig(AppConfig):
    name = "evaluation.benchmarks.duplexmpe"
    label = "duplexmpe"
    verbose_name = "Duplex-MPE"
    default_auto_field = "django.db.models.BigAutoField"
