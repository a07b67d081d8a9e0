// The program of the link checks (tests/link/CMakeLists.txt): nothing runs; linking is the test.
int main() { return 0; }
