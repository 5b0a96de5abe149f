"""What PostgreSQL's own catalog says about base tables, types and functions: reflection
(reflect.py) and the schema provider the frontend asks (provider.py)."""
