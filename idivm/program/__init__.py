"""The Δ-program IR (steps over abstract relations), its printer and its JSON form."""
