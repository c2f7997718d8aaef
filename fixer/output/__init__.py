"""What fixer writes: the terminal rendering, the JSON contract, Markdown, the site's data, issue
reports and redaction."""
