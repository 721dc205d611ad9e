from django.apps import AppConfig


class MPBenchConfig(AppConfig):
    name = "evaluation.benchmarks.mpbench"
    label = "mpbench"
    verbose_name = "MP-Bench"
