from tests.transfer.installations import (  # noqa: F401 (the package's fixtures)
    filled,
    installation,
    postgres_databases,
    set_up_installations,
)
