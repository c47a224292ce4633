"""HTTP in: the listening socket, the ASGI server and its guards, Socket Mode, OAuth."""
