"""Delivering exactly once, in four parts (in the order a post goes through them):

- ``deliverer`` — :class:`Deliverer`: a batch, channel by channel; asks the decider what each
  ledger row calls for;
- ``protocol`` — the exactly-once steps (claim → post → ts → replies → posted; recovery from
  the channel's history; edits), each returning an outcome;
- ``paced`` — an outbox wrapping any outbox: retries, backoff, pacing, the bound in flight;
- ``pausing`` — a refused channel's subscriptions paused, its subscribers told.

What goes in and comes out is in ``items``; the ledger's group-commit writer is
:mod:`digests.store.ledger_writer`."""
