from django.apps import AppConfig


class ToyBenchConfig(AppConfig):
    """The example plug-in is a Django app, as every plug-in is (README, "Adding a benchmark",
    step 1): installed wherever it is registered (config/settings.py installs each package of
    FLOORBOARD_BENCHMARKS), and always in the test settings."""

    name = "tests.toyplugin"
    label = "toybench"
    verbose_name = "Toy-Bench"
