"""The one error type the episode store raises for bad input or a damaged store."""


class StoreError(ValueError):
    """Raised for a path that is not a store, a damaged store, or an episode that
    does not fit the store's schema. The message names the bad value and, where
    there is a fixed set, the valid choices."""


class DamagedStoreError(StoreError):
    """Raised for a store whose files are damaged (a missing or undecodable chunk) or
    whose records disagree. The message names the store, the array and the chunk."""
