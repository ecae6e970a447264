"""The built-in simulated vendor: an OpenAI- and Anthropic-compatible HTTP server on
127.0.0.1 (`sim_server`), its answer rules, batches, prompt cache, streaming, and the
process-wide instance the "simulated" preset points at (`sim_vendor`).

A test double that is also the demo's vendor: nothing in `judging` imports it except the
engine's address lookup; it imports only the standard library and `judging.demo`'s data.
"""
