"""Helpers, checks and tools behind the executed XNNPACK lowering guide.

The recipes in ``snippets/`` import :mod:`xnnguide.measure` for the few steps
that would distract from the lowering itself (timing, summaries). Everything
else here serves the build: :mod:`xnnguide.facts` carries measured numbers
from a recipe to the pages, :mod:`xnnguide.regions` reads the marked regions
that pages and the README include, and :mod:`xnnguide.sphinxext` ties them
into Sphinx.
"""
