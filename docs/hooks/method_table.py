"""mkdocs hook: replace ``<!-- vilab:method-table -->`` by the method table generated from the code."""

MARKER = "<!-- vilab:method-table -->"


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    from vilab.algorithms import method_table_markdown

    return markdown.replace(MARKER, method_table_markdown())
