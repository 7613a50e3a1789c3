// Holder of the tests' shared precompiled header (tests/CMakeLists.txt); never run.
int main() { return 0; }
