"""``python -m compiler.mlir_variants``: the catalog as a Markdown table."""

from . import catalog_markdown

print(catalog_markdown())
