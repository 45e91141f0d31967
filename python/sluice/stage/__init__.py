"""Stage mode's tools: the tier, its journal entries, and publishing what they describe.

docs/stage.md is the contract with the preload library (src/tiers/stage.c and src/stage/),
which writes the same entries and publishes with the same steps.
"""
