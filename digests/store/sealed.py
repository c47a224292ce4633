"""Slack tokens at rest: encrypted with Fernet (``cryptography``) when a key is set.

``DIGESTBOT_SECRET_KEY`` holds one or more Fernet keys, comma-separated: the first seals
every token written, each of them opens what it sealed (``MultiFernet``), so a key is
rotated by putting the new one first and dropping the old once nothing sealed with it is
left (``Installations.reseal`` seals every stored token with the first key). A stored
token is ``fernet:`` and the Fernet token; one without the prefix is plain (written
before a key was set, or without one) and is read as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from digests.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from cryptography.fernet import Fernet, MultiFernet

PREFIX = "fernet:"


class TokenCipher:
    """Seals and opens tokens with the keys of ``DIGESTBOT_SECRET_KEY``."""

    def __init__(self, keys: str) -> None:
        # Imported only with a key: OpenSSL's bindings add ~7 MB to every process.
        from cryptography.fernet import Fernet, InvalidToken, MultiFernet

        self._invalid = InvalidToken
        parts = [k.strip() for k in keys.split(",") if k.strip()]
        try:
            self._first: Fernet | None = Fernet(parts[0]) if parts else None
            self._fernet: MultiFernet = MultiFernet([Fernet(k) for k in parts])
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                "DIGESTBOT_SECRET_KEY must be Fernet keys (32 url-safe base64 bytes each, "
                'comma-separated); make one with: python -c "from cryptography.fernet '
                'import Fernet; print(Fernet.generate_key().decode())"'
            ) from exc

    def seal(self, token: str) -> str:
        return PREFIX + self._fernet.encrypt(token.encode()).decode("ascii")

    def fresh(self, stored: str) -> str | None:
        """``stored`` sealed with the first key, or None when it is already."""
        if stored.startswith(PREFIX) and self._first is not None:
            try:
                self._first.decrypt(stored[len(PREFIX) :].encode("ascii"))
                return None
            except self._invalid:
                pass
        return self.seal(self.open(stored))

    def open(self, stored: str) -> str:
        if not stored.startswith(PREFIX):
            return stored
        try:
            return self._fernet.decrypt(stored[len(PREFIX) :].encode("ascii")).decode()
        except (self._invalid, UnicodeError) as exc:
            raise StoreError(
                "a stored Slack token does not open with DIGESTBOT_SECRET_KEY: the key it "
                "was sealed with is not among its keys"
            ) from exc


class SealedToken(sa.types.TypeDecorator[str]):
    """A token column: sealed on the way in, opened on the way out (plain without a
    cipher; a sealed one then cannot be read, which is said, not guessed)."""

    impl = sa.Text
    cache_ok = True

    def __init__(self, cipher: TokenCipher | None) -> None:
        super().__init__()
        self.cipher = cipher

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> str | None:
        if value is None:
            return None
        return str(value) if self.cipher is None else self.cipher.seal(str(value))

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> str | None:
        if value is None:
            return None
        if self.cipher is not None:
            return self.cipher.open(str(value))
        if str(value).startswith(PREFIX):
            raise StoreError(
                "Slack tokens are stored encrypted but DIGESTBOT_SECRET_KEY is not set"
            )
        return str(value)
