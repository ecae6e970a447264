"""Vendor batch APIs as a run mode: a critic with `mode: batch` is asked about every item in one
job on the vendor's side (OpenAI's Batch API, Anthropic's Message Batches), at half price,
within 24 hours.

Only the sending differs from a live call: each request is the very body `prepare_call`
builds (its cache key is the line's `custom_id`), and each result line goes back through
`CallRunner.call` (`BatchAnswers`), so parsing, scrubbing, the cache, the ledger and storage
are the live path's own.

- `lines`: request lines and their chunking into batches within the vendors' limits.
- `clients`: the two APIs over httpx (uploads, creation, polling, result files).
- `results`: a result file's lines as (custom_id, status, body) for `parse_reply`.
The run's side (what to submit, polling that survives restarts) is `judging.runs.background.batch_phase`.
"""
