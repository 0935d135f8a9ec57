"""Measurements that are not tests: run by hand or by `make`, numbers go in the README."""
