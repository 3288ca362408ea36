"""Benchmarks behind `recall bench ...`: retrieval quality (LoCoMo) and hook latency."""
