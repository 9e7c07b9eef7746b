"""Transformations as jaxpr rewrites: jvp, vmap, partial_eval, transpose, dce."""
