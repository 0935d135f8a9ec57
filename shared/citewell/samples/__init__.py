"""The bundled sample corpus: two fictional organisations, several formats, several roles.

``python -m citewell.samples DIR`` writes it. Binary formats are generated here with the
same libraries users' files come from (fpdf2, python-docx, openpyxl), so nothing binary is
checked in. Layout: ``DIR/<tenant>/<audience>/<file>``; the Makefile ingests each audience
folder with its roles.
"""
