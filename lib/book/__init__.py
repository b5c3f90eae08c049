"""What every chapter shares: parameters, results files, plotting, tables, seeding."""
