"""The machinery behind the executed XNNPACK lowering guide; readers never import it.

Code a reader sees or downloads uses public packages only
(:mod:`xnnguide.reader_code` checks that). This package serves the build
and the contributors: :mod:`xnnguide.facts` carries numbers measured in a
recipe's hidden blocks to the pages, :mod:`xnnguide.sphinxext` runs and
records the recipes inside Sphinx, :mod:`xnnguide.regions` keeps the
README's copies of recipe regions in step, :mod:`xnnguide.doccheck` is the
drift checker, and :mod:`xnnguide.aot_compiler` is the site's command-line
compiler.
"""
