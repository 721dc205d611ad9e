"""Every command here is a development tool: installed with FLOORBOARD_DEV_TOOLS=1 only."""
