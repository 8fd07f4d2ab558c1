// unit_a.cpp and unit_b.cpp each have a static checksum() and an anonymous-namespace mix()
// of the same signature: same names, different functions.
#pragma once

int unit_a(const unsigned char* data, int size);
int unit_b(const unsigned char* data, int size);
