"""External benchmarks run through their own data and checkers (`officegym bench ...`)."""
