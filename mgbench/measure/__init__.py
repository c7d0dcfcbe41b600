"""Arithmetic over what a run measured, alike for every framework: step times, warm-up and the
steady window (`timing`), the step timer, phases, held-out metrics, and profiler traces read into
per-device intervals and their breakdown. Imports only `core`."""
