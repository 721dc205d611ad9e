"""A benchmark plug-in's own bench command, from its demo/commands/ package (config/devtools)."""

from config.devtools import plugin_command

Command = plugin_command(__name__)
