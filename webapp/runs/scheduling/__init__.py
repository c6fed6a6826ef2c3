"""Scheduling of runs: devices, the fair queue, leases and claims, the reaper, the worker registry."""
