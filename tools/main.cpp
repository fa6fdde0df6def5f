// Placeholder entry point so the skeleton builds; replaced by the CLI.
int main() { return 0; }
