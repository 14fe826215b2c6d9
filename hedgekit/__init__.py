"""hedgekit: a teaching kit for probabilistic ("hedged") embeddings."""

__version__ = "0.1.0"
