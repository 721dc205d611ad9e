"""Duplex-MPE: full-duplex multi-party interaction (SPEC: ../shared/benchmarks/duplexmpe/SPEC.md)."""
