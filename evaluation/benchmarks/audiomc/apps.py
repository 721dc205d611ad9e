from django.apps import AppConfig


class AudioMCConfig(AppConfig):
    name = "evaluation.benchmarks.audiomc"
    label = "audiomc"
    verbose_name = "Audio MultiChallenge"
