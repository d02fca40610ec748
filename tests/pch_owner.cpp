// Owns the unit tests' precompiled header (tests/CMakeLists.txt, caesium_test_pch); no code.
