"""Campaigns past one machine: the session's shards on Dask's distributed scheduler.

``client`` plans the shards, submits them and is the corpus's one writer; ``shard`` is the Dask
task (an ordinary session in a scratch corpus, its writes streamed to the client); ``relay``
is the driver's side of that stream, ``stream`` the client's; ``merge`` is the writer's
deduplication, shared with ``python -m harness corpus merge``. Only ``client``, ``stream`` and
``shard`` import Dask, so the rest of the harness runs without it.
"""
