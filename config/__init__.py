"""Everything about configuration: settings, the default TOML, the manifest, the example feed."""

from config.settings import (
    ChannelConfig,
    ScheduleConfig,
    Settings,
    ShowConfig,
    bundled_path,
    load_settings,
)

__all__ = [
    "ChannelConfig",
    "ScheduleConfig",
    "Settings",
    "ShowConfig",
    "bundled_path",
    "load_settings",
]
