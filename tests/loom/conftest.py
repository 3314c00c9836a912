from tests.loom.fixtures import *  # noqa: F403  (the Loom's fixtures, shared with the Anvil's tests)
