"""REST API of accounts, one module per resource: tokens, the browser session, passwords, teams,
members, invitations. The URLconf imports each view from its module."""
