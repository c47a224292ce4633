"""Shared pytest setup. Fixtures live in tests/fixtures/, one module per real part."""

pytest_plugins = [
    "tests.fixtures.feeds",
    "tests.fixtures.slack",
    "tests.fixtures.store",
    "tests.fixtures.app",
    "tests.fixtures.poll",
    "tests.fixtures.github",
]
