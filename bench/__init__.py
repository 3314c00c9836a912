"""Benchmarks and the retrieval evaluation harness: the yardsticks, kept apart from the product.

A plain package, not a Django app: ``python -m bench WHAT …`` (``bench/__main__.py``) sets up
Django and runs one of the commands in ``bench/cli.py``. It may import anything of the apps;
nothing in the apps imports it.
"""
