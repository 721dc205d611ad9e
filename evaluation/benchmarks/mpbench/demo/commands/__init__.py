"""The plug-in's own bench commands, installed through config/devtools (FLOORBOARD_DEV_TOOLS=1)."""
