"""Embeddings: the shipped all-MiniLM-L6-v2 int8 model (its graphs and tokenizer files), the embedder the
worker keeps warm, and vector arithmetic (dot products, similarities)."""
