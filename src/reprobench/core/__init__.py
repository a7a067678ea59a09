"""What every benchmark shares: curve files, provenance, seeding, device, statistics, plots, tables."""
