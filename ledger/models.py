"""The ledger: one row per finished call to Claude (or to a local model server in its place), with
the usage the API reported.

A row is written once, when the call finishes (``ledger.services.model_call_record``), and never
changed: the costs are worked out from it at the prices of the day they are read
(``ledger/costs.py``), so a corrected price corrects every figure.
"""

from django.db import models

from silentstar.when import when


class ModelCall(models.Model):
    ts = models.DateTimeField(db_index=True, help_text="When the call finished.")
    component = models.CharField(
        max_length=64, help_text="What the call was for: heart, mirror-clean, …"
    )
    model = models.CharField(
        max_length=100, help_text="The model that answered, as the API named it."
    )
    offline = models.BooleanField(
        default=False, help_text="Answered by the offline stand-in, without the API."
    )
    local = models.BooleanField(
        default=False, help_text="Answered by a local model server, which costs nothing."
    )
    input_tokens = models.PositiveIntegerField(
        help_text="Input tokens neither read from the cache nor written to it."
    )
    output_tokens = models.PositiveIntegerField()
    cache_read_tokens = models.PositiveIntegerField()
    cache_write_5m_tokens = models.PositiveIntegerField()
    cache_write_1h_tokens = models.PositiveIntegerField()
    web_searches = models.PositiveIntegerField(
        default=0, help_text="Searches the web search tool made, paid for by the search."
    )

    class Meta:
        verbose_name = "model call"

    def __str__(self) -> str:
        return f"{self.component} {self.model} at {when(self.ts)}"
