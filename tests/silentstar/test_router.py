import pytest
from django.apps import apps
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from compass.models import Consultation
from events.models import Event, Turn
from gem.models import Fragment, WorkingMemory
from heart.models import ContextSnapshot
from ledger.models import ModelCall
from mirror.models import Summary
from silentstar.router import StoreRouter, same_database, store_for
from transfer.models import ImportedMemory, ImportedMessage, ImportRun

HOMES = {
    Event: "events",
    Turn: "events",
    ModelCall: "events",
    ContextSnapshot: "snapshots",
    Summary: "summaries",
    Consultation: "summaries",
    Fragment: "default",
    WorkingMemory: "default",
    ImportRun: "default",
    ImportedMessage: "events",
    ImportedMemory: "summaries",
}
ALIASES = ("default", "events", "summaries", "snapshots")


@pytest.mark.parametrize(("model", "alias"), HOMES.items())
def test_it_sends_each_model_to_its_store(model, alias):
    assert store_for(model._meta.app_label, model._meta.model_name) == alias


def test_it_keeps_framework_models_in_the_default_store():
    for model in apps.get_models():
        if model._meta.app_label not in {"events", "heart", "ledger", "mirror", "compass"} and (
            model not in HOMES
        ):
            assert store_for(model._meta.app_label, model._meta.model_name) == "default"


@pytest.mark.django_db(databases="__all__")
@pytest.mark.parametrize(("model", "alias"), HOMES.items())
def test_it_writes_and_reads_rows_in_their_store(model, alias):
    assert model.objects.all().db == alias


@pytest.mark.django_db(databases="__all__")
def test_it_creates_each_table_only_where_its_store_lives():
    tables = {alias: set(connections[alias].introspection.table_names()) for alias in ALIASES}
    for model in apps.get_models():
        home = store_for(model._meta.app_label, model._meta.model_name)
        for alias in ALIASES:
            present = model._meta.db_table in tables[alias]
            assert present == same_database(alias, home), (model, alias)


@pytest.mark.django_db(databases="__all__")
@pytest.mark.parametrize("alias", ALIASES)
def test_it_has_applied_every_migration_on_every_alias(alias):
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    assert plan == []


def test_it_allows_relations_only_inside_one_store():
    router = StoreRouter()
    assert router.allow_relation(Event(), Turn()) is True
    assert router.allow_relation(Fragment(), WorkingMemory()) is True
    assert router.allow_relation(Fragment(), Event()) is False
    assert router.allow_relation(Summary(), ContextSnapshot()) is False
