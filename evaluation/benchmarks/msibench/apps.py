from django.apps import AppConfig


class MSIBenchConfig(AppConfig):
    name = "evaluation.benchmarks.msibench"
    label = "msibench"
    verbose_name = "MSI-Bench"
