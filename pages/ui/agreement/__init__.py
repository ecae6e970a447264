"""The Agreement page: its data (cached), sections, tables, charts and views."""
