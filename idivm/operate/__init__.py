"""Running maintained views unattended: policies, status, the scheduler worker."""
