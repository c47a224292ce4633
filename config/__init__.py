"""Everything about configuration: settings, the default TOML, the manifest, the example feed."""
